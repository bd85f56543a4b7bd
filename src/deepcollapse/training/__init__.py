"""deepcollapse.training"""
